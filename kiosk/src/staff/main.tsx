import { render } from 'solid-js/web'
import { Console } from './Console'
import './staff.css'

render(() => <Console />, document.getElementById('root')!)
