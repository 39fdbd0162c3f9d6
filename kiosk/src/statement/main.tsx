import { render } from 'solid-js/web'
import { Statement } from './Statement'
import '../page.css'
import './statement.css'

render(() => <Statement />, document.getElementById('root')!)
