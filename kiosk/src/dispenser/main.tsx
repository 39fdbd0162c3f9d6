import { render } from 'solid-js/web'
import { Dispenser } from './Dispenser'
import './dispenser.css'

render(() => <Dispenser />, document.getElementById('root')!)
